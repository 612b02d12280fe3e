"""The benchmarks behind aimctl bench: backbone, deployer, download, memory."""
