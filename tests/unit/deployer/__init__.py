"""The deployer: template selection, custom models, overrides, the InferenceService, routing, readiness."""
