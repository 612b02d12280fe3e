"""The status service and the status rules: composition, coalescing, authority, events, reasons."""
