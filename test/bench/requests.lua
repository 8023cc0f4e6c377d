-- wrk script of `make bench`: sends, round-robin, the requests listed in the file
-- given after `--`. Blocks are separated by a line "%%"; a block is the request
-- line "METHOD PATH", header lines, an empty line and a one-line body. "{n}" in
-- a body becomes a string unique to the request (new users need new emails):
-- the run's nonce (second argument), the thread and a counter.
-- With a third argument `streamed` (requests good once: ./load.ts streamedFiles),
-- thread i reads its own file, "<first argument>.<i>", one request at a time as it
-- sends: a line with the request's length in bytes, then the request as sent. No two
-- threads send one request, and the load has as many threads as any other row's. A
-- thread that reaches the end of its file starts it again: the box refuses those
-- replays, and the row counts them as failures (too few requests for its rate).
-- done() prints one JSON line starting with BENCH_RESULT for the harness.
local blocks = {}
local stream = nil
local templated = {}
local counter = 0
-- thread_id: a global that setup() sets in each thread (a local would hide it)
local nonce = ""

local function split(text, sep)
  local parts, start = {}, 1
  while true do
    local i, j = string.find(text, sep, start, true)
    if not i then table.insert(parts, string.sub(text, start)); return parts end
    table.insert(parts, string.sub(text, start, i - 1))
    start = j + 1
  end
end

local threads = {}
function setup(thread)
  thread:set("thread_id", #threads)
  table.insert(threads, thread)
end

local function next_streamed()
  local length = stream:read("*l")
  if not length then
    stream:seek("set")
    length = stream:read("*l")
  end
  return stream:read(tonumber(length))
end

function init(args)
  nonce = args[2] or ""
  thread_id = thread_id or 0
  if args[3] == "streamed" then
    stream = assert(io.open(args[1] .. "." .. thread_id, "rb"))
    return
  end
  local f = assert(io.open(args[1], "r"))
  local text = f:read("*a")
  f:close()
  for _, block in ipairs(split(text, "\n%%\n")) do
    if #block > 0 then
      local head, body = block:match("^(.-)\n\n(.*)$")
      if not head then head, body = block, "" end
      local lines = split(head, "\n")
      local method, path = lines[1]:match("^(%S+) (%S+)$")
      local headers = {}
      for i = 2, #lines do
        local name, value = lines[i]:match("^([^:]+): (.*)$")
        if name then headers[name] = value end
      end
      if body:find("{n}", 1, true) then
        table.insert(blocks, { method = method, path = path, headers = headers, body = body })
        templated[#blocks] = true
      else
        table.insert(blocks, wrk.format(method, path, headers, body ~= "" and body or nil))
      end
    end
  end
  -- threads start at different requests so they do not move in step
  counter = thread_id * 7919
end

function request()
  if stream then return next_streamed() end
  counter = counter + 1
  local i = (counter % #blocks) + 1
  if templated[i] then
    local b = blocks[i]
    local body = b.body:gsub("{n}", nonce .. tostring(thread_id) .. "x" .. tostring(counter))
    return wrk.format(b.method, b.path, b.headers, body)
  end
  return blocks[i]
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'BENCH_RESULT {"requests":%d,"duration_us":%d,"p50_us":%d,"p90_us":%d,"p99_us":%d,"max_us":%d,"errors_status":%d,"errors_connect":%d,"errors_read":%d,"errors_write":%d,"errors_timeout":%d}\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max,
    e.status, e.connect, e.read, e.write, e.timeout))
end
