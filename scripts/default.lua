-- default.lua: the built-in policy. mycached loads it when no --policy is
-- given: every cacheable SELECT is memoized for --default-ttl (60 s unless
-- set), per user. Copy it to start a policy of your own.
--
-- A script defines up to three hooks. Each is called with q (or w), a
-- read-only view of the statement, and next, the same hook of the script
-- loaded before this one. Calling next(q) asks the earlier script; below the
-- first script, next(q) is the built-in default for cache, and nothing for
-- invalidate and query. The parameter shadows Lua's own next() inside the
-- hook, which is why it is safe to name it so.
--
--   cache(q, next)       -> nil (don't cache) or a decision table
--   invalidate(w, next)  -> nil or {"db.table", ...} to invalidate as well
--   query(q, next)       -> nil, a SQL string to run instead, or a result
--
-- q has: sql, digest (normalized text), kind ("select", "show", ...), tables
-- ({"db.table", ...}), db, user, client_addr, prepared, params,
-- in_transaction, cacheable, why_not, point_lookup (the statement pins its
-- table's whole primary key) and keys (the key values it names).
--
-- A cache() call that reads only shape fields of q (everything but sql,
-- params and client_addr) and calls neither now() nor cache.* is memoized
-- per (digest, db, user, kind, in_transaction): the next statement of that
-- shape does not enter Lua. A script whose decisions depend on its own state
-- sets the global memo = false at its top level.
--
-- The decision table, every field optional:
--   ttl          seconds the entry lives (default 60; fractions allowed)
--   soft_ttl     seconds after which one read reads afresh and replaces the entry,
--                while the others are still served it
--   scope        "user" (default) or "shared": who may read the entry
--   max_bytes    the largest result to store (0 = the server's limit)
--   cache_empty  store results with no rows (default true)
--   depends      {"db.table", ...} whose writes also invalidate the entry
--   consistency  "strict" or "bounded" (default: --consistency)
--   admit        "always" or "never": override adaptive admission
--
-- Scripts run sandboxed: base (without load, loadstring, loadfile, dofile),
-- table, string, math, os.time and os.date. require("mycached") gives
-- cache.get/set/delete, log.info/warn(msg, key, value, ...), now(),
-- metrics.inc(name), null and default_ttl (--default-ttl in seconds).
-- Globals cannot be created after load, and the libraries and the mycached
-- table are read-only. Each call must finish within --policy-timeout and
-- may build a few MiB of strings and tables through the libraries and ..
-- (more for a large statement); past either it is stopped, and the
-- statement is served without caching.

local mycached = require("mycached")

function cache(q, next)
  if not q.cacheable or q.kind ~= "select" then
    return nil
  end
  return { ttl = mycached.default_ttl, scope = "user" }
end
