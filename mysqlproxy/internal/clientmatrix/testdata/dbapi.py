"""Case runner shared by the Python DB-API drivers (PyMySQL, mysqlclient).

A driver module supplies connect(conf, reconnect), ping(conn, reconnect),
error_fields(conn, exc) and warnings(conn, cursor); run() reads the case
file named on the command line and prints one JSON line per event.
"""

import json
import sys
import time


def emit(obj):
    sys.stdout.write(json.dumps(obj, ensure_ascii=False, sort_keys=True) + "\n")
    sys.stdout.flush()


def text(v):
    """A column value as the transcript shows it: a string, or None for NULL."""
    if v is None:
        return None
    if isinstance(v, (bytes, bytearray)):
        try:
            return bytes(v).decode("utf-8")
        except UnicodeDecodeError:
            return "0x" + bytes(v).hex()
    # The type name shows how the driver converted the value.
    return type(v).__name__ + ":" + str(v)


def param(p):
    """A case parameter as a Python value: strings stay strings."""
    if isinstance(p, dict):
        if "int" in p:
            return int(p["int"])
        if "double" in p:
            return float(p["double"])
    return p


class Runner:
    def __init__(self, driver, conf):
        self.d = driver
        self.conf = conf

    def open(self, name, reconnect, compress=False):
        if name == "admin":
            return self.d.connect(self.conf["admin"], False)
        return self.d.connect(dict(self.conf["target"], compress=compress), reconnect)

    def run_case(self, case):
        emit({"case": case["id"], "event": "start"})
        conns = {}
        reconnect = case.get("reconnect", False)
        main_id = None
        for i, st in enumerate(case["steps"]):
            out = {"case": case["id"], "step": i, "conn": st.get("conn", "main")}
            try:
                if "sleep" in st:
                    time.sleep(st["sleep"])
                    out["slept"] = st["sleep"]
                    emit(out)
                    continue
                name = st.get("conn", "main")
                if name not in conns:
                    conns[name] = self.open(name, reconnect, case.get("compress", False))
                    if name == "main":
                        c = conns[name].cursor()
                        c.execute("SELECT CONNECTION_ID()")
                        main_id = str(c.fetchone()[0])
                        c.close()
                conn = conns[name]
                if st.get("ping"):
                    self.d.ping(conn, reconnect)
                    out["ping"] = "ok"
                elif "prepare" in st:
                    out.update(self.execute(conn, st["prepare"].replace("{main_id}", str(main_id)),
                                            [param(p) for p in st.get("params", [])]))
                else:
                    out.update(self.execute(conn, st["sql"].replace("{main_id}", str(main_id)), None))
            except Exception as e:  # the transcript records every failure
                out["error"] = self.d.error_fields(conns.get(st.get("conn", "main")), e)
            emit(out)
        for c in conns.values():
            try:
                c.close()
            except Exception:
                pass
        emit({"case": case["id"], "event": "end"})

    def execute(self, conn, sql, params):
        """Runs sql (with params: interpolated by the driver) and returns
        every result set, or the results before an error and the error."""
        out = {"results": []}
        cur = conn.cursor()
        if params is None:
            cur.execute(sql)
        else:
            out["interpolated"] = True
            cur.execute(sql.replace("?", "%s"), params)
        while True:
            res = {}
            if cur.description is not None:
                res["columns"] = [list(d) for d in cur.description]
                res["rows"] = [[text(v) for v in row] for row in cur.fetchall()]
            else:
                res["affected"] = cur.rowcount
                res["insert_id"] = cur.lastrowid
            res["warnings"] = self.d.warnings(conn, cur)
            out["results"].append(res)
            try:
                if not cur.nextset():
                    break
            except Exception as e:
                out["error"] = self.d.error_fields(conn, e)
                break
        cur.close()
        return out


def run(driver):
    with open(sys.argv[1], encoding="utf-8") as f:
        conf = json.load(f)
    r = Runner(driver, conf)
    for case in conf["cases"]:
        r.run_case(case)
