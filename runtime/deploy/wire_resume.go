package deploy

// SubjectResume is where client <user> asks the coordinator to resume one
// of its queries after the client's own connection to NATS was lost and
// came back (a server outage): what the query's sinks sent while the client
// was away is gone, so the query must run again from an epoch the client
// has written, as a new generation that starts after the client listens
// again.
const SubjectResume = "tierflow.ctl.resume" // .<user>

// ResumeSubject is where client user asks to resume its queries.
func ResumeSubject(user string) string { return SubjectResume + "." + user }

// ResumeRequest asks for query to be re-deployed as a new generation:
// Written is the epoch below which the client has written every result
// (the new generation need not hurry past it), Generation the newest
// generation the client had seen.
type ResumeRequest struct {
	Query      string `json:"query"`
	Written    uint64 `json:"written"`
	Generation int    `json:"generation"`
}

// ResumeReply names the generation the client must read from now on:
// results of an older one are stale.
type ResumeReply struct {
	Generation int    `json:"generation"`
	Error      string `json:"error,omitempty"`
	// Ended: the query ended while its client was disconnected, in State
	// (with its QueryError and ErrorKind when it failed): the client ends
	// with that, not with a resume that failed.
	Ended      bool   `json:"ended,omitempty"`
	State      string `json:"state,omitempty"`
	QueryError string `json:"query_error,omitempty"`
	ErrorKind  string `json:"error_kind,omitempty"`
}
