"""Entry point: ``python -m aim_deployer`` or ``aim-deployer``."""

from aim_deployer.app import run


def main() -> None:
    run()


if __name__ == "__main__":
    main()
