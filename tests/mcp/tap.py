#!/usr/bin/env python3
"""A tap for tests: runs an MCP server (the command after `--`) with this process's stdout and
stderr, relays every line the client writes to its stdin unchanged, and appends each line to LOG
(the first argument) as it passes. tests/binary/mcp.rs reads LOG to see what reached the server,
such as `notifications/cancelled`. Exits with the server's status once the client closes stdin."""
import subprocess
import sys


def main() -> int:
    log_path = sys.argv[1]
    command = sys.argv[sys.argv.index("--") + 1 :]
    server = subprocess.Popen(command, stdin=subprocess.PIPE)
    with open(log_path, "ab", buffering=0) as log:
        for line in sys.stdin.buffer:
            log.write(line)
            try:
                server.stdin.write(line)
                server.stdin.flush()
            except BrokenPipeError:
                break
    try:
        server.stdin.close()
    except BrokenPipeError:
        pass
    return server.wait()


if __name__ == "__main__":
    sys.exit(main())
