-- JSON-RPC GetTask of one existing task (its id comes in the TASK_ID environment variable).
function init(args)
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
  wrk.headers["A2A-Version"] = "1.0"
  wrk.body = '{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"' .. os.getenv("TASK_ID") .. '"}}'
end
