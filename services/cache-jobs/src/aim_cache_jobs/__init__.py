"""The cache service's Job programs, a package of their own that the cache image installs beside the
service: ``aim-download`` (:mod:`aim_cache_jobs.downloader.cli`), which a model cache's download Job
runs, and ``aim-model-inspect`` (:mod:`aim_cache_jobs.inspect`), which a ``pvc://`` LLMKube Model's
verify Job runs; with what they are built from, the downloader (:mod:`aim_cache_jobs.downloader`)
and the GGUF header reader (:mod:`aim_cache_jobs.gguf`).

The cache service depends on this package (it runs the same downloader in its own process where
there is no kubelet, and for LLMKube Models; it reads GGUF headers for ``status.gguf``); this
package never imports the service (an import contract in ``pyproject.toml`` keeps it so)."""
