"""Entry point: ``python -m aim_status`` or ``aim-status``."""

from aim_status.app import run


def main() -> None:
    run()


if __name__ == "__main__":
    main()
