package cli

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseBatches reads a --batch list ("1,8,64") of batch sizes, 1 to 4096.
func ParseBatches(s string) ([]int, error) {
	var out []int
	for _, p := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || n < 1 || n > 4096 {
			return nil, fmt.Errorf("--batch %q: %q is not a batch size (1..4096)", s, p)
		}
		out = append(out, n)
	}
	return out, nil
}
