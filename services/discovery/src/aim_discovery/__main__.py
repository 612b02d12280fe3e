"""Entry point: ``python -m aim_discovery`` or ``aim-discovery``."""

from aim_discovery.app import run


def main() -> None:
    run()


if __name__ == "__main__":
    main()
