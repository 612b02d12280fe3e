"""The CRD models, the CRD files generated from them, the samples and the rules they check."""
