package connectors

// SetReadByFetch has ephemeral JetStream consumers read by Fetch (true) or
// by Consume (false, the default), for BenchmarkJetStreamConsume.
func SetReadByFetch(on bool) { readByFetch = on }
