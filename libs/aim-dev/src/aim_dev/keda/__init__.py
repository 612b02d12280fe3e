"""What plays KEDA on a local control plane: a stand-in for KEDA's ScaledObject controller and its
activation decision (KEDA cannot run here, and there is no metrics backend to decide from).
:mod:`aim_dev.keda.scaledobject` says exactly what it emulates and what not;
:mod:`aim_dev.keda.controller` runs it, inside the KServe stand-in's process
(``python -m aim_dev.kserve``)."""
