"""The registry-sync service: model source filters, version ranges, derived names."""
