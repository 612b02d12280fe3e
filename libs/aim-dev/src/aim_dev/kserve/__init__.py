"""What plays KServe on the local node: a stand-in for KServe's controller in RawDeployment mode
(KServe cannot be built here). :mod:`aim_dev.kserve.raw` says what it emulates;
``python -m aim_dev.kserve --kubeconfig K`` runs it."""
