"""Runs the client matrix's cases with the mariadb command-line client.

Each connection of a case is one mariadb process in batch mode, fed one
statement at a time on stdin. Its output goes to a pseudo-terminal, so
that stdout and stderr arrive line by line in the order they were
written; after each statement a shell "echo" of a marker tells where the
statement's output ends. The transcript line of a step holds that output.

The client has no binary protocol: prepared steps become PREPARE, EXECUTE
... USING and DEALLOCATE PREPARE. Its reconnect option is --reconnect;
it has no ping.
"""

import json
import os
import pty
import re
import subprocess
import sys
import time
import tty

MARK = "@@clientmatrix-end-of-statement@@"
DELIM = "$$"


def emit(obj):
    sys.stdout.write(json.dumps(obj, ensure_ascii=False, sort_keys=True) + "\n")
    sys.stdout.flush()


def normalize(text):
    # Timings and connection ids differ from run to run.
    text = re.sub(r"\(\d+\.\d+ sec\)", "(T sec)", text)
    return re.sub(r"Connection id:\s+\d+", "Connection id: N", text)


class Session:
    """One mariadb process and the pseudo-terminal it writes to."""

    def __init__(self, c, reconnect):
        master, slave = pty.openpty()
        tty.setraw(slave)
        args = ["mariadb", "--no-defaults", "--protocol=tcp", "-h", c["host"], "-P", str(c["port"]),
                "-u", c["user"], "-p" + c["password"], "--table", "--column-type-info", "--show-warnings",
                "-vvv", "--force", "--local-infile=1", "--default-character-set=utf8mb4",
                "--reconnect" if reconnect else "--disable-reconnect"]
        if c.get("compress"):
            args.append("--compress")
        if c["database"]:
            args.append(c["database"])
        self.proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=slave, stderr=slave)
        os.close(slave)
        self.master = master
        self.rest = b""
        self.send("delimiter " + DELIM + "\n")

    def send(self, s):
        self.proc.stdin.write(s.encode("utf-8"))
        self.proc.stdin.flush()

    def run(self, sql):
        """Runs one statement and returns its output lines."""
        self.send(sql + DELIM + "\n\\! echo " + MARK + "\n")
        mark = MARK.encode()
        buf = bytearray(self.rest)
        at = buf.find(mark)
        while at < 0:
            try:
                data = os.read(self.master, 1 << 20)
            except OSError:
                data = b""
            if not data:
                self.rest = b""
                return self.lines(bytes(buf)) + ["<client exited>"]
            # Look for the marker only where it can newly appear: a blob's
            # output can run to megabytes.
            start = max(0, len(buf) - len(mark))
            buf += data
            at = buf.find(mark, start)
        self.rest = bytes(buf[at + len(mark):]).lstrip(b"\r\n")
        return self.lines(bytes(buf[:at]))

    @staticmethod
    def lines(out):
        return normalize(out.decode("utf-8", "backslashreplace")).rstrip("\n").split("\n")

    def close(self):
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self.master)


def literal(p):
    if p is None:
        return "NULL"
    if isinstance(p, dict):
        return repr(p.get("int", p.get("double")))
    return "'" + p.replace("\\", "\\\\").replace("'", "''") + "'"


def run_case(conf, case):
    emit({"case": case["id"], "event": "start"})
    sessions = {}
    main_id = ""
    reconnect = case.get("reconnect", False)
    for i, st in enumerate(case["steps"]):
        name = st.get("conn", "main")
        out = {"case": case["id"], "step": i, "conn": name}
        if "sleep" in st:
            time.sleep(st["sleep"])
            out["slept"] = st["sleep"]
            emit(out)
            continue
        if name not in sessions:
            c = conf["admin"] if name == "admin" else dict(conf["target"], compress=case.get("compress", False))
            sessions[name] = Session(c, reconnect and name != "admin")
            if name == "main":
                m = re.findall(r"\|\s*(\d+)\s*\|", "\n".join(sessions[name].run("SELECT CONNECTION_ID()")))
                main_id = m[-1] if m else ""
        s = sessions[name]
        if st.get("ping"):
            out["ping"] = "unsupported"
        elif "prepare" in st:
            sql = st["prepare"].replace("{main_id}", main_id)
            if sql != st["prepare"]:
                raise ValueError("prepared statements cannot use {main_id}")
            params = st.get("params", [])
            lines = s.run("PREPARE cm_stmt FROM " + literal(sql))
            using = " USING " + ", ".join(literal(p) for p in params) if params else ""
            lines += s.run("EXECUTE cm_stmt" + using)
            lines += s.run("DEALLOCATE PREPARE cm_stmt")
            out["out"] = lines
        else:
            sql = st["sql"].replace("{main_id}", main_id)
            # The client echoes the statement; the id in it differs by run.
            out["out"] = [line.replace(sql, st["sql"]) for line in s.run(sql)]
        emit(out)
    for s in sessions.values():
        s.close()
    emit({"case": case["id"], "event": "end"})


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        conf = json.load(f)
    for case in conf["cases"]:
        run_case(conf, case)


if __name__ == "__main__":
    main()
