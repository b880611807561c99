-- tag-statements.lua: prepend a comment tag to every statement, so that the
-- server's process list, slow log and performance_schema show which
-- application sent it. The query hook runs before anything else, for text
-- statements and prepares alike; returning a string makes mycached run (or
-- prepare) that text instead.
--
-- The tag names the application and the database user. The comment goes
-- first so that MariaDB keeps it in the slow log and SHOW PROCESSLIST.
-- Statements tagged by an earlier script (next returned a string) are
-- tagged on top; results from an earlier script pass through untouched.
--
-- Whatever goes into the comment is reduced to letters, digits and "_.-@":
-- a user name is the client's to choose, and one holding "*/" would end the
-- comment and put its own SQL before the statement.

local app = "shop"

local function clean(s)
  return (s:gsub("[^%w_.@-]", "_"))
end

function query(q, next)
  local r = next(q)
  if type(r) == "table" then
    return r
  end
  local sql = r or q.sql
  if not sql:find("[^%s;]") then
    return r -- an empty statement stays empty: the server refuses it (1065)
  end
  return "/* app=" .. clean(app) .. " user=" .. clean(q.user) .. " */ " .. sql
end
