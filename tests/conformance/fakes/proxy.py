"""A thin NDJSON proxy in front of a real `pod serve`, for fake (deliberately broken) pods.

    python3 <fake>.py <real pod command...>

Runs the real pod as a child, copies the client's lines to it and its lines back, letting the
fake rewrite each line on the way (`to_pod` / `to_client` return the lines to forward). Stdlib
only; stdin EOF is passed on, and the proxy exits with the pod's exit code.
"""

import os
import subprocess
import sys
import threading


def run(to_pod, to_client):
    if len(sys.argv) < 2:
        sys.exit("usage: %s <pod command...>" % sys.argv[0])
    pod = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def pump_in():
        try:
            for line in sys.stdin.buffer:
                for out in to_pod(line):
                    pod.stdin.write(out)
                pod.stdin.flush()
            pod.stdin.close()
        except BrokenPipeError:
            pass

    threading.Thread(target=pump_in, daemon=True).start()
    for line in pod.stdout:
        for out in to_client(line):
            sys.stdout.buffer.write(out)
        sys.stdout.buffer.flush()
    # os._exit: the stdin thread may still be parked in a read, which would abort a normal exit.
    os._exit(pod.wait())
