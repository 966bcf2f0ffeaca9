"""Child process for the lock tests: takes a lease lock, says so, waits for a line on stdin,
then says whether it still holds the lock ("kept") or lost it to a takeover ("lost").

    python lock_holder.py PATH LEASE_S [drain]

With ``drain``, PATH is a memory folder and the lock is capture's drain lock (its lease set to
LEASE_S in this process, as the test sets it in its own)."""

from __future__ import annotations

import sys
from pathlib import Path


def main(path: str, lease: float, drain: bool) -> None:
    if drain:
        from trimem.capture import state

        state.DRAIN_LEASE_S = lease
        with state.CaptureState(path).drain_lock() as got:
            print("held" if got else "busy", flush=True)
            sys.stdin.readline()
        return
    from trimem.storage.locks import lease_lock

    with lease_lock(Path(path), lease, lease + 5).hold() as held:
        print("held", flush=True)
        sys.stdin.readline()
        print("lost" if held.lost() else "kept", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]), len(sys.argv) > 3 and sys.argv[3] == "drain")
