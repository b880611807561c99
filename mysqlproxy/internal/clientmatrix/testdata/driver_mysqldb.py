"""Runs the client matrix's cases with mysqlclient (python3-mysqldb).

mysqlclient has no server-side prepared statements: prepared cases are
interpolated by the driver. Its reconnect option is ping(True). It runs
every case with the compressed protocol, so that the whole list is also
checked compressed, on both of mycached's hops.
"""

import os
import sys

# dbapi.py sits next to this file; importing it must leave no __pycache__
# in the source tree.
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import MySQLdb  # noqa: E402
from MySQLdb.constants import CLIENT  # noqa: E402

import dbapi  # noqa: E402


class Driver:
    @staticmethod
    def connect(c, reconnect):
        return MySQLdb.connect(host=c["host"], port=c["port"], user=c["user"], password=c["password"],
                               database=c["database"], charset="utf8mb4", autocommit=True, local_infile=1,
                               # Every case, with the compressed protocol: the
                               # whole list is run compressed by one client.
                               # (Any compress argument turns it on.)
                               compress=1,
                               client_flag=CLIENT.MULTI_STATEMENTS | CLIENT.MULTI_RESULTS)

    @staticmethod
    def ping(conn, reconnect):
        if reconnect:
            conn.ping(True)
        else:
            conn.ping()

    @staticmethod
    def error_fields(conn, e):
        out = {"class": type(e).__name__}
        if isinstance(e, MySQLdb.MySQLError) and len(e.args) == 2:
            out["code"], out["message"] = e.args[0], str(e.args[1])
            try:
                out["state"] = conn.sqlstate()
            except Exception:
                pass
        else:
            out["message"] = str(e)
        return out

    @staticmethod
    def warnings(conn, cur):
        return conn.warning_count()


if __name__ == "__main__":
    dbapi.run(Driver)
