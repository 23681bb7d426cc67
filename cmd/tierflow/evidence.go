package main

import (
	"fmt"

	"github.com/tierflow/tierflow/examples/fashion"
	"github.com/tierflow/tierflow/runtime/dataaware"
)

// loadEvidence is the SneakPeek evidence `--evidence DIR` names: the
// 5 nearest neighbours of a row in the Fashion-MNIST training sample of
// DIR (examples/fashion: data/train-sample-*), in a 64-dimensional random
// projection, as runtime/dataaware's live policy and `bench sneakpeek` use
// it. "" is none.
func loadEvidence(dir string) (dataaware.Evidence, error) {
	if dir == "" {
		return nil, nil
	}
	s, err := fashion.LoadTrainSample(dir)
	if err != nil {
		return nil, fmt.Errorf("--evidence %s: %w", dir, err)
	}
	return dataaware.NewKNN(s.Images, s.Labels, 784, fashion.Labels, 5, 64, 1)
}
