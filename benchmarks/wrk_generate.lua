-- wrk script for bench_router_hop.py: POSTs the JSON body in $WRK_BODY (a plain GET when it is
-- unset or empty), and at the end prints one line, "WRK_JSON {...}", with the request count,
-- the duration, the errors and latency percentiles, so two wrk processes' runs can be pooled.
-- No response() hook: it would hand every body to Lua and slow wrk down.

local body = os.getenv("WRK_BODY")
if body ~= nil and body ~= "" then
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
  wrk.body = body
end

local QUANTILES = {}
for q = 0.5, 99.5, 0.5 do
  QUANTILES[#QUANTILES + 1] = q
end
QUANTILES[#QUANTILES + 1] = 99.9

done = function(summary, latency, requests)
  local points = {}
  for _, q in ipairs(QUANTILES) do
    points[#points + 1] = string.format("[%.1f, %d]", q, latency:percentile(q))
  end
  -- wrk 4.1's percentile(100) answers 0: the maximum is latency.max
  points[#points + 1] = string.format("[100.0, %d]", latency.max)
  local e = summary.errors
  io.write(string.format(
    'WRK_JSON {"requests": %d, "duration_us": %d, "errors": {"connect": %d, "read": %d, '
      .. '"write": %d, "status": %d, "timeout": %d}, "percentiles_us": [%s]}\n',
    summary.requests, summary.duration, e.connect, e.read, e.write, e.status, e.timeout,
    table.concat(points, ", ")
  ))
end
