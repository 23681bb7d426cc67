// Package ml is the ML inference operator: it turns Arrow tensor columns into model
// inputs without per-element copies through Go values, runs a model Session,
// and turns the outputs back into Arrow columns (label/score for a classification
// head, a tensor column for an embedding). A Triton-like dynamic batcher groups
// rows into batches cut on size or queue delay, adapts the batch size to the input
// rate, keeps row order, and marks a failing row with its error while the rest of
// the batch goes on.
//
// Tensor columns are fixed_size_list<float32> whose field metadata carries the
// per-row shape under the key "tierflow.shape" as comma-separated dimensions
// (for example "1,28,28"); the list size is the product of the shape.
//
// Three ways to run it: Model.Infer (one record, synchronously), Runner (a
// goroutine with a wall-clock batcher), and Operator (a dataflow operator: the
// engine wakes it at the queue-delay deadline and it holds a capability per
// pending input batch).
//
// The package knows nothing of ONNX Runtime or devices: it defines the Session
// interface that runtime/onnx implements. It must not import relay/ or runtime/.
package ml
