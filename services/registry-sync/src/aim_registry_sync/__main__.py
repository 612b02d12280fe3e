"""Entry point: ``python -m aim_registry_sync`` or ``aim-registry-sync``."""

from aim_registry_sync.app import run


def main() -> None:
    run()


if __name__ == "__main__":
    main()
