-- orm-entities.lua: the two caches of an ORM, with nothing in the app.
--
-- An ORM's second-level cache keeps entities by id for a long time and
-- drops the one entity that changed; its query cache keeps everything else
-- briefly. mycached invalidates primary-key lookups row by row (a write
-- to one row drops only the lookups that name it), so they can live long;
-- range reads, joins and aggregates are invalidated by any write to their
-- tables, and a short ttl bounds what a write behind the proxy's back
-- (another application, a trigger, a cascade) can leave stale.
--
-- q.point_lookup is true for a SELECT on one table whose WHERE pins the
-- whole primary key to constants (pk = ?, pk IN (...), or a composite key
-- fully bound); q.keys lists the key values it names.
--
-- The decision reads only shape fields of q, so mycached memoizes it per
-- statement shape and Lua runs once per shape, not once per statement.
-- See default.lua for the hook and decision reference.

local entity_ttl = 3600 -- seconds a point lookup lives: an entity by id
local query_ttl  = 5    -- seconds every other cacheable read lives

function cache(q, next)
  if not q.cacheable or q.kind ~= "select" then
    return nil
  end
  if q.point_lookup then
    return { ttl = entity_ttl }
  end
  return { ttl = query_ttl }
end
