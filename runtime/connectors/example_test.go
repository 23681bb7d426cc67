package connectors_test

import (
	"fmt"

	"github.com/tierflow/tierflow/runtime/connectors"
)

// The registry holds every transport in every format; a catalog's stream or
// sink picks one by its kind and FORMAT.
func ExampleBuiltins() {
	for _, c := range connectors.Builtins().Components() {
		fmt.Printf("%s/%s: %s\n", c.Kind, c.Format, c.Doc)
	}
	_, err := connectors.Builtins().Lookup("kafka", "json")
	fmt.Println(err)
	// Output:
	// jetstream/arrow: JetStream stream, one Arrow IPC stream per message (one record batch, split by rows to fit the max payload)
	// jetstream/csv: JetStream stream, CSV rows without header, fields in column order
	// jetstream/json: JetStream stream, one JSON object per message (or JSON lines), fields matched by name
	// nats/arrow: core NATS subject, one Arrow IPC stream per message (one record batch, split by rows to fit the max payload)
	// nats/csv: core NATS subject, CSV rows without header, fields in column order
	// nats/json: core NATS subject, one JSON object per message (or JSON lines), fields matched by name
	// connectors: no such connector: kafka format json (have jetstream/arrow, jetstream/csv, jetstream/json, nats/arrow, nats/csv, nats/json)
}
