package deploy

// Access is the authority a query's sources and sinks act with: its
// owner's, never the worker's (runtime/security checks subjects against
// it, on the coordinator when it plans and on every worker when it builds
// its part).
//
// Data are the subject patterns the owner was granted (nats-setup --client
// NAME --data 'sensors.>'); Restricted says that they bound the owner (the
// coordinator has an authority file); without it any data subject outside
// the engine's namespaces may be used (an open cluster, `tierflow run` on
// one's own machine). JWT, when set, is a NATS user JWT the coordinator
// minted for this query on the worker's data key (WorkerInfo.DataKey) with
// exactly the owner's data permissions: the worker opens the part's
// streams and sinks on a connection of that user, so that a check missed
// is still refused by the server.
type Access struct {
	Data       []string `json:"data,omitempty"`
	Restricted bool     `json:"restricted,omitempty"`
	JWT        string   `json:"jwt,omitempty"`
	// Streams names the JetStream stream each of the query's JetStream
	// subjects is in, as the coordinator found or made it: a minted data
	// user may read those streams' information but not list the
	// account's streams (their names would tell others' subjects).
	Streams map[string]string `json:"streams,omitempty"`
}
