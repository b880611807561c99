-- read-mostly.lua: cache reads of tables that are read far more often than
-- they are written, and stop caching a table while it is invalidated about
-- as fast as it is read (its entries would die before they are hit).
--
-- It is a filter: for a statement whose tables pass, it returns the earlier
-- script's decision (next), or the built-in default (60 s, per user) when
-- it is loaded first. Load it after allowlist.lua to combine the two.
--
-- How it counts: cache() counts reads per table and invalidate() counts
-- confirmed writes per table, over a sliding pair of windows of `window`
-- seconds (the current one and the one before). A SELECT is cached when
-- every table it reads has at least `min_ratio` reads per write.
--
-- The counts live in script-local tables. mycached runs a pool of Lua
-- states and each state has its own copy of this script, so each state
-- sees a share of the traffic. The rule compares reads with writes of the
-- same state, a ratio, so the share does not matter; what a state has not
-- yet seen (right after start or reload) counts as zero writes.
--
-- Because decisions depend on these counts, the script turns off the
-- per-shape memo: cache() runs for every cacheable statement.
memo = false

local mc = require("mycached")

local window    = 60  -- seconds per counting window
local min_ratio = 20  -- reads per write a table needs to be cached

local reads, writes = {}, {}
local prev_reads, prev_writes = {}, {}
local window_start = mc.now()

local function roll()
  local now = mc.now()
  if now - window_start >= window then
    prev_reads, prev_writes = reads, writes
    reads, writes = {}, {}
    window_start = now
  end
end

local function count(t, name)
  t[name] = (t[name] or 0) + 1
end

local function read_mostly(name)
  local r = (reads[name] or 0) + (prev_reads[name] or 0)
  local w = (writes[name] or 0) + (prev_writes[name] or 0)
  return w == 0 or r >= min_ratio * w
end

function cache(q, next)
  if not q.cacheable or q.kind ~= "select" then
    return nil
  end
  roll()
  local ok = #q.tables > 0
  for _, t in ipairs(q.tables) do
    count(reads, t)
    if not read_mostly(t) then
      ok = false
    end
  end
  if not ok then
    mc.metrics.inc("read_mostly_skipped")
    return nil
  end
  return next(q)
end

function invalidate(w, next)
  roll()
  for _, t in ipairs(w.tables) do
    count(writes, t)
  end
  return next(w)
end
