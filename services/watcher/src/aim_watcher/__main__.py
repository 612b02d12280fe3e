"""Entry point: ``python -m aim_watcher`` or ``aim-watcher``."""

from aim_watcher.app import run


def main() -> None:
    run()


if __name__ == "__main__":
    main()
