-- HTTP+JSON ListTasks, first page of one task (the page a client polls), newest first.
function init(args)
  wrk.method = "GET"
  wrk.headers["A2A-Version"] = "1.0"
  wrk.path = "/tasks?pageSize=1"
end
