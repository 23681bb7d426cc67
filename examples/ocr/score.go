package ocr

// Read is one text box the pipeline found in a scene and what it says.
type Read struct {
	ID             int64
	X0, Y0, X1, Y1 int
	Score          float32
	Text           string
	Confidence     float32
}

// Score is how well reads match the labels.
type Score struct {
	Lines    int // labelled lines
	Found    int // lines a box overlaps at IoU >= 0.5
	Correct  int // found lines whose box's text equals the label
	Extra    int // boxes that match no line
	CharDist int // edit distance summed over lines (a missed line: all its characters)
	Chars    int // characters of the labels
}

// Accuracy is the share of labelled lines read exactly, in percent.
func (s Score) Accuracy() float64 { return pct(s.Correct, s.Lines) }

// Recall is the share of labelled lines the detector found, in percent.
func (s Score) Recall() float64 { return pct(s.Found, s.Lines) }

// CharAccuracy is 1 - edit distance / characters, in percent.
func (s Score) CharAccuracy() float64 { return 100 - pct(s.CharDist, s.Chars) }

func pct(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return 100 * float64(a) / float64(b)
}

// Match scores reads against the scenes' labels: each labelled line takes
// the read of its scene whose box overlaps it most (IoU at least 0.5), each
// read at most one line.
func Match(scenes []*Scene, reads []Read) Score {
	byID := map[int64][]Read{}
	for _, r := range reads {
		byID[r.ID] = append(byID[r.ID], r)
	}
	var s Score
	for _, sc := range scenes {
		rs := byID[sc.ID]
		used := make([]bool, len(rs))
		for _, l := range sc.Lines {
			s.Lines++
			s.Chars += len([]rune(l.Text))
			best, bi := 0.5, -1
			for i, r := range rs {
				if used[i] {
					continue
				}
				if v := iou(l.X0, l.Y0, l.X1, l.Y1, r.X0, r.Y0, r.X1, r.Y1); v >= best {
					best, bi = v, i
				}
			}
			if bi < 0 {
				s.CharDist += len([]rune(l.Text))
				continue
			}
			used[bi] = true
			s.Found++
			if rs[bi].Text == l.Text {
				s.Correct++
			}
			s.CharDist += min(editDistance(rs[bi].Text, l.Text), len([]rune(l.Text)))
		}
		for _, u := range used {
			if !u {
				s.Extra++
			}
		}
	}
	return s
}

func iou(a0, b0, a1, b1, c0, d0, c1, d1 int) float64 {
	ix := max(0, min(a1, c1)-max(a0, c0))
	iy := max(0, min(b1, d1)-max(b0, d0))
	inter := float64(ix * iy)
	union := float64((a1-a0)*(b1-b0)+(c1-c0)*(d1-d0)) - inter
	if union <= 0 {
		return 0
	}
	return inter / union
}

// editDistance is the Levenshtein distance between a and b, by runes.
func editDistance(a, b string) int {
	x, y := []rune(a), []rune(b)
	prev := make([]int, len(y)+1)
	cur := make([]int, len(y)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(x); i++ {
		cur[0] = i
		for j := 1; j <= len(y); j++ {
			c := prev[j-1]
			if x[i-1] != y[j-1] {
				c++
			}
			cur[j] = min(c, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return prev[len(y)]
}
