package fashion

import (
	"fmt"
	"path/filepath"

	"github.com/tierflow/tierflow/runtime/modelzoo"
)

// LoadTrainSample reads dir/data/train-sample-{images,labels}-*.gz: the first
// 2,000 of the 60,000 training images (from the Debian package
// dataset-fashion-mnist), the sample that SneakPeek's nearest-neighbour
// estimator searches. Disjoint from the test subset.
func LoadTrainSample(dir string) (*Subset, error) {
	x, err := modelzoo.ReadIDXFile(filepath.Join(dir, "data", "train-sample-images-idx3-ubyte.gz"))
	if err != nil {
		return nil, err
	}
	y, err := modelzoo.ReadIDXFile(filepath.Join(dir, "data", "train-sample-labels-idx1-ubyte.gz"))
	if err != nil {
		return nil, err
	}
	if x.Items() != y.Items() || x.ItemSize() != 784 {
		return nil, fmt.Errorf("fashion training sample: %d images of %d values, %d labels", x.Items(), x.ItemSize(), y.Items())
	}
	return &Subset{Images: x.Floats(), Labels: y.Data}, nil
}
