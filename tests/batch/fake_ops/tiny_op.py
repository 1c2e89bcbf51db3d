"""A tiny stand-in op for the lane tests: ``python tiny_op.py MODE [FILE]``. It imports no
tritongate, so a worker (or a fresh process) runs it in a tenth of a second.

Every mode first prints ``pid N`` and a JSON line of what an earlier op may have left in the
process (``TINY_LEFTOVER``, cwd, ``sys.path[0]``, the SIGTERM handler). Modes:

  ok       writes to stdout and stderr through Python, through the descriptors and through a
           child process, then changes env, cwd, sys.path, argv and SIGTERM (the worker must
           put them back); exit 0
  sigkill  SIGKILL to itself        segv     SIGSEGV to itself     os_exit  os._exit(7)
  exit3    an error line, exit 3    raise    an uncaught RuntimeError
  hang     ignores SIGTERM, starts a grandchild, writes {pid, pgid, child, running} to FILE
           (``running``: the .running file it was given, as read), then sleeps
  partner  leases the process's GPU-turn partner (a stand-in program, no torch), takes a turn
           and prints ``partner N``; exit 0
  stray    starts a process that outlives it, prints ``stray N``; exit 0
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time


def main() -> int:
    mode = sys.argv[1]
    print(f"pid {os.getpid()}", flush=True)
    term = signal.getsignal(signal.SIGTERM)
    print(json.dumps({"leftover": os.environ.get("TINY_LEFTOVER"), "cwd": os.getcwd(), "path0": sys.path[0],
                      "sigterm_default": term == signal.SIG_DFL}), flush=True)
    if mode == "ok":
        print("python stderr", file=sys.stderr, flush=True)
        os.write(1, b"fd stdout\n")
        os.write(2, b"fd stderr\n")
        subprocess.run(["sh", "-c", "echo child stdout; echo child stderr >&2"], check=True)
        os.environ["TINY_LEFTOVER"] = "1"
        os.chdir("/")
        sys.path.insert(0, "/nowhere")
        sys.argv.append("--leftover")
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        return 0
    if mode == "sigkill":
        os.kill(os.getpid(), signal.SIGKILL)
    if mode == "segv":
        os.kill(os.getpid(), signal.SIGSEGV)
    if mode == "os_exit":
        os._exit(7)
    if mode == "exit3":
        print("error: a failure with rc 3", file=sys.stderr)
        return 3
    if mode == "raise":
        raise RuntimeError("boom")
    if mode == "partner":
        from tritongate.harness import gpu_turns

        gpu_turns.PARTNER_PROGRAM = ("import sys\nprint('ready', flush=True)\n"
                                     "for _ in sys.stdin:\n    print('ok', flush=True)\n")
        lease = gpu_turns.lease_partner("cuda", 0)
        print(f"partner {lease.pid}", flush=True)
        return 0 if lease.take_turn() else 8
    if mode == "stray":
        stray = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        print(f"stray {stray.pid}", flush=True)
        return 0
    if mode == "hang":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        running = json.loads(open(sys.argv[3]).read())
        out = {"pid": os.getpid(), "pgid": os.getpgid(0), "child": child.pid, "running": running}
        with open(sys.argv[2] + ".tmp", "w") as f:
            json.dump(out, f)
        os.rename(sys.argv[2] + ".tmp", sys.argv[2])  # whole or absent
        while True:
            time.sleep(1)
    return 9


if __name__ == "__main__":
    sys.exit(main())
