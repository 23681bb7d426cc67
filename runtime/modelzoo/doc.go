// Package modelzoo trains small image classifiers in pure Go (multinomial logistic
// regression and MLPs, mini-batch Adam, deterministic seeds) and writes them as ONNX
// models with hand-encoded protobuf (protowire), so the project builds its example
// models with its own tools. It also reads those models back, to evaluate a file
// with a forward pass that does not go through ONNX Runtime, and reads and writes
// the IDX files Fashion-MNIST ships in.
//
// It is a library: it runs no session and must not import anything above runtime.
package modelzoo
