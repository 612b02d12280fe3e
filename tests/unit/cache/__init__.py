"""The cache service's planning and the downloader's pure parts."""
