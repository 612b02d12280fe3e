"""Entry point: ``python -m aim_cache`` or ``aim-cache``."""

from aim_cache.app import run


def main() -> None:
    run()


if __name__ == "__main__":
    main()
