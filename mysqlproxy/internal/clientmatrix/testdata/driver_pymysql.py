"""Runs the client matrix's cases with PyMySQL (python3-pymysql).

PyMySQL has no server-side prepared statements: prepared cases are
interpolated by the driver. Its reconnect option is ping(reconnect=True).
"""

import os
import sys

# dbapi.py sits next to this file; importing it must leave no __pycache__
# in the source tree.
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import pymysql  # noqa: E402
from pymysql.constants import CLIENT  # noqa: E402

import dbapi  # noqa: E402


class Driver:
    @staticmethod
    def connect(c, reconnect):
        return pymysql.connect(host=c["host"], port=c["port"], user=c["user"], password=c["password"],
                               database=c["database"], charset="utf8mb4", autocommit=True,
                               local_infile=True, client_flag=CLIENT.MULTI_STATEMENTS)

    @staticmethod
    def ping(conn, reconnect):
        conn.ping(reconnect=reconnect)

    @staticmethod
    def error_fields(conn, e):
        if isinstance(e, pymysql.err.MySQLError) and len(e.args) == 2:
            return {"class": type(e).__name__, "code": e.args[0], "message": str(e.args[1])}
        return {"class": type(e).__name__, "message": str(e)}

    @staticmethod
    def warnings(conn, cur):
        r = getattr(cur, "_result", None)
        return None if r is None else r.warning_count


if __name__ == "__main__":
    dbapi.run(Driver)
