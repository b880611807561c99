-- allowlist.lua: cache only the tables listed below, each for its own ttl.
--
-- A SELECT is cached when every table it reads is listed; its ttl is the
-- smallest of theirs, so a join lives no longer than its most volatile
-- table. Anything else (unlisted tables, statements that read no table,
-- such as SELECT 1) is not cached. Names are "db.table", as in q.tables.
--
-- The decision reads only shape fields of q, so mycached memoizes it per
-- statement shape and Lua runs once per shape, not once per statement.
-- See default.lua for the hook and decision reference.

local ttls = {
  ["shop.products"]   = 300,
  ["shop.categories"] = 3600,
  ["shop.prices"]     = 1,
}

function cache(q, next)
  if not q.cacheable or q.kind ~= "select" then
    return nil
  end
  local ttl
  for _, t in ipairs(q.tables) do
    local s = ttls[t]
    if s == nil then
      return nil
    end
    if ttl == nil or s < ttl then
      ttl = s
    end
  end
  if ttl == nil then
    return nil
  end
  return { ttl = ttl }
end
