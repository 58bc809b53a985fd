package llm

import (
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"

	"github.com/agentbus/agentbus/llm/vector"
)

// ErrLSA wraps every failure to train an LSA model.
var ErrLSA = errors.New("llm: lsa")

// LSAConfig sizes an LSA model. The zero value means the defaults.
type LSAConfig struct {
	// Dim is the number of latent dimensions; default 128.
	Dim int
	// MinDF drops words found in fewer texts; default 2.
	MinDF int
	// MaxDFRatio drops words found in more than this share of the texts;
	// default 0.5.
	MaxDFRatio float64
	// PowerIters is the randomized SVD's power iterations; default 2.
	PowerIters int
}

func (c *LSAConfig) setDefaults() {
	if c.Dim == 0 {
		c.Dim = 128
	}
	if c.MinDF == 0 {
		c.MinDF = 2
	}
	if c.MaxDFRatio == 0 {
		c.MaxDFRatio = 0.5
	}
	if c.PowerIters == 0 {
		c.PowerIters = 2
	}
}

// LSA is an embedder learned from a corpus with latent semantic analysis:
// the corpus's tf-idf term–document matrix is factored by a truncated,
// randomized SVD, and a text is embedded as its tf-idf vector projected on
// the top Dim right singular vectors, L2-normalised. Words that occur in
// the same documents land near each other, so a query can meet a chunk
// that shares its meaning but not its words — within what the corpus
// teaches. Training is deterministic (a fixed seed) and offline. A model
// is immutable and safe for concurrent use; its Name carries a hash of
// the model, so that vectors of different models are never mixed.
type LSA struct {
	name  string
	dim   int
	vocab map[string]int
	idf   []float32
	proj  []float32 // len(vocab) × dim, row-major
	// trainedOn is how many texts the model was trained on.
	trainedOn int
}

var _ Embedder = (*LSA)(nil)

// Name is "local-lsa-<dim>-<model hash>".
func (m *LSA) Name() string { return m.name }

// Embed projects each text on the model's latent dimensions. A text with
// no word of the model's vocabulary embeds as the zero vector.
func (m *LSA) Embed(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = m.vector(t)
	}
	return out, nil
}

func (m *LSA) vector(text string) []float32 {
	v := make([]float32, m.dim)
	idx, val := m.tfidf(text)
	for k, j := range idx {
		row := m.proj[j*m.dim : (j+1)*m.dim]
		for d, p := range row {
			v[d] += val[k] * p
		}
	}
	vector.Normalize(v)
	return v
}

// tfidf is text's sparse, L2-normalised tf-idf vector over the vocabulary:
// (1+ln tf)·idf per word.
func (m *LSA) tfidf(text string) ([]int, []float32) {
	counts := map[int]int{}
	for _, w := range Tokenize(text) {
		if j, ok := m.vocab[w]; ok {
			counts[j]++
		}
	}
	idx := make([]int, 0, len(counts))
	for j := range counts {
		idx = append(idx, j)
	}
	slices.Sort(idx)
	val := make([]float32, len(idx))
	var norm float64
	for k, j := range idx {
		x := (1 + float32(math.Log(float64(counts[j])))) * m.idf[j]
		val[k] = x
		norm += float64(x) * float64(x)
	}
	if norm > 0 {
		inv := float32(1 / math.Sqrt(norm))
		for k := range val {
			val[k] *= inv
		}
	}
	return idx, val
}

// TrainLSA learns an LSA model from texts (a tenant's chunks). It costs
// O(words × Dim) time per power iteration and O(vocabulary × Dim) memory.
func TrainLSA(ctx context.Context, texts []string, cfg LSAConfig) (*LSA, error) {
	cfg.setDefaults()
	if cfg.Dim < 2 || cfg.MinDF < 1 || cfg.MaxDFRatio <= 0 || cfg.MaxDFRatio > 1 || cfg.PowerIters < 0 {
		return nil, fmt.Errorf("%w: config %+v out of range", ErrLSA, cfg)
	}
	// The vocabulary: words in at least MinDF and at most MaxDFRatio of
	// the texts, in sorted order so that the model does not depend on map
	// order.
	df := map[string]int{}
	for _, t := range texts {
		seen := map[string]bool{}
		for _, w := range Tokenize(t) {
			if !seen[w] {
				seen[w] = true
				df[w]++
			}
		}
	}
	var words []string
	for w, n := range df {
		if n >= cfg.MinDF && float64(n) <= cfg.MaxDFRatio*float64(len(texts)) {
			words = append(words, w)
		}
	}
	slices.Sort(words)
	if len(words) < cfg.Dim || len(texts) < cfg.Dim {
		return nil, fmt.Errorf("%w: %d texts with %d shared words are too few for %d dimensions", ErrLSA, len(texts), len(words), cfg.Dim)
	}
	m := &LSA{dim: cfg.Dim, vocab: make(map[string]int, len(words)), idf: make([]float32, len(words)), trainedOn: len(texts)}
	for j, w := range words {
		m.vocab[w] = j
		m.idf[j] = float32(math.Log(float64(len(texts)) / float64(df[w])))
	}
	// A: the texts' tf-idf rows, sparse.
	rows := make([]sparseRow, len(texts))
	for i, t := range texts {
		rows[i].idx, rows[i].val = m.tfidf(t)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	v, err := randomizedSVD(ctx, rows, len(words), cfg)
	if err != nil {
		return nil, err
	}
	m.proj = v
	h := fnv.New64a()
	for j, w := range words {
		_, _ = h.Write([]byte(w))
		for _, x := range v[j*cfg.Dim : (j+1)*cfg.Dim] {
			_, _ = h.Write([]byte(strconv.FormatFloat(float64(x), 'g', 6, 32)))
		}
	}
	m.name = fmt.Sprintf("local-lsa-%d-%08x", cfg.Dim, uint32(h.Sum64()))
	return m, nil
}

type sparseRow struct {
	idx []int
	val []float32
}

// randomizedSVD returns the top cfg.Dim right singular vectors of the
// n × cols matrix rows, as a cols × Dim row-major matrix (Halko, Martinsson
// and Tropp's randomized range finder with power iterations, then an
// exact eigendecomposition of the small projected matrix).
func randomizedSVD(ctx context.Context, rows []sparseRow, cols int, cfg LSAConfig) ([]float32, error) {
	l := cfg.Dim + 10 // oversampling
	rng := rand.New(rand.NewPCG(1, 2))
	omega := make([]float64, cols*l)
	for i := range omega {
		omega[i] = rng.NormFloat64()
	}
	y := mulA(rows, omega, l) // n × l
	orthonormalize(y, len(rows), l)
	for range cfg.PowerIters {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		z := mulAT(rows, y, cols, l) // cols × l
		orthonormalize(z, cols, l)
		y = mulA(rows, z, l)
		orthonormalize(y, len(rows), l)
	}
	z := mulAT(rows, y, cols, l) // Aᵀ Q = Bᵀ, cols × l
	// B Bᵀ = Zᵀ Z (l × l): its eigenvectors are B's left singular
	// vectors, its eigenvalues the squared singular values.
	g := make([]float64, l*l)
	for r := range cols {
		zr := z[r*l : (r+1)*l]
		for a, x := range zr {
			if x == 0 {
				continue
			}
			ga := g[a*l : (a+1)*l]
			for b := a; b < l; b++ {
				ga[b] += x * zr[b]
			}
		}
	}
	for a := range l {
		for b := range a {
			g[a*l+b] = g[b*l+a]
		}
	}
	vals, vecs := jacobiEigen(g, l)
	order := make([]int, l)
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		switch {
		case vals[a] > vals[b]:
			return -1
		case vals[a] < vals[b]:
			return 1
		}
		return a - b
	})
	// V_k = Bᵀ W_k / σ_k = Z W_k / σ_k.
	out := make([]float32, cols*cfg.Dim)
	for k := range cfg.Dim {
		e := order[k]
		sigma := math.Sqrt(math.Max(vals[e], 0))
		if sigma == 0 {
			continue
		}
		for r := range cols {
			var s float64
			zr := z[r*l : (r+1)*l]
			for a := range l {
				s += zr[a] * vecs[a*l+e]
			}
			out[r*cfg.Dim+k] = float32(s / sigma)
		}
	}
	return out, nil
}

// mulA returns A·X for A sparse (n × cols) and X dense (cols × l).
func mulA(rows []sparseRow, x []float64, l int) []float64 {
	out := make([]float64, len(rows)*l)
	for i, r := range rows {
		o := out[i*l : (i+1)*l]
		for k, j := range r.idx {
			v := float64(r.val[k])
			xj := x[j*l : (j+1)*l]
			for c := range o {
				o[c] += v * xj[c]
			}
		}
	}
	return out
}

// mulAT returns Aᵀ·Y for A sparse (n × cols) and Y dense (n × l).
func mulAT(rows []sparseRow, y []float64, cols, l int) []float64 {
	out := make([]float64, cols*l)
	for i, r := range rows {
		yi := y[i*l : (i+1)*l]
		for k, j := range r.idx {
			v := float64(r.val[k])
			o := out[j*l : (j+1)*l]
			for c := range o {
				o[c] += v * yi[c]
			}
		}
	}
	return out
}

// orthonormalize makes the l columns of the n × l matrix m orthonormal
// (modified Gram–Schmidt, twice for stability); a column that vanishes
// stays zero.
func orthonormalize(m []float64, n, l int) {
	for range 2 {
		for c := range l {
			for p := range c {
				var dot float64
				for r := range n {
					dot += m[r*l+c] * m[r*l+p]
				}
				for r := range n {
					m[r*l+c] -= dot * m[r*l+p]
				}
			}
			var norm float64
			for r := range n {
				norm += m[r*l+c] * m[r*l+c]
			}
			if norm < 1e-20 {
				for r := range n {
					m[r*l+c] = 0
				}
				continue
			}
			inv := 1 / math.Sqrt(norm)
			for r := range n {
				m[r*l+c] *= inv
			}
		}
	}
}

// jacobiEigen diagonalises the symmetric n × n matrix a (destroyed) by
// cyclic Jacobi rotations; it returns the eigenvalues and the
// eigenvectors as the columns of an n × n matrix.
func jacobiEigen(a []float64, n int) ([]float64, []float64) {
	v := make([]float64, n*n)
	for i := range n {
		v[i*n+i] = 1
	}
	for sweep := 0; sweep < 60; sweep++ {
		var off float64
		for p := range n {
			for q := p + 1; q < n; q++ {
				off += a[p*n+q] * a[p*n+q]
			}
		}
		if off < 1e-22 {
			break
		}
		for p := range n {
			for q := p + 1; q < n; q++ {
				apq := a[p*n+q]
				if math.Abs(apq) < 1e-300 {
					continue
				}
				theta := (a[q*n+q] - a[p*n+p]) / (2 * apq)
				t := math.Copysign(1, theta) / (math.Abs(theta) + math.Sqrt(theta*theta+1))
				c := 1 / math.Sqrt(t*t+1)
				s := t * c
				for k := range n {
					akp, akq := a[k*n+p], a[k*n+q]
					a[k*n+p] = c*akp - s*akq
					a[k*n+q] = s*akp + c*akq
				}
				for k := range n {
					apk, aqk := a[p*n+k], a[q*n+k]
					a[p*n+k] = c*apk - s*aqk
					a[q*n+k] = s*apk + c*aqk
				}
				for k := range n {
					vkp, vkq := v[k*n+p], v[k*n+q]
					v[k*n+p] = c*vkp - s*vkq
					v[k*n+q] = s*vkp + c*vkq
				}
			}
		}
	}
	vals := make([]float64, n)
	for i := range n {
		vals[i] = a[i*n+i]
	}
	return vals, v
}

// lsaFile is the serialised form of an LSA model.
type lsaFile struct {
	Name      string
	Dim       int
	Words     []string
	IDF, Proj []float32
	TrainedOn int
}

// TrainedOn is how many texts the model was trained on.
func (m *LSA) TrainedOn() int { return m.trainedOn }

// Dim is the model's dimension.
func (m *LSA) Dim() int { return m.dim }

// WriteTo writes the model (gob) to w.
func (m *LSA) WriteTo(w io.Writer) (int64, error) {
	f := lsaFile{Name: m.name, Dim: m.dim, Words: make([]string, len(m.vocab)), IDF: m.idf, Proj: m.proj, TrainedOn: m.trainedOn}
	for word, j := range m.vocab {
		f.Words[j] = word
	}
	cw := &countWriter{w: w}
	err := gob.NewEncoder(cw).Encode(f)
	return cw.n, err
}

// ReadLSA reads a model written by WriteTo.
func ReadLSA(r io.Reader) (*LSA, error) {
	var f lsaFile
	if err := gob.NewDecoder(r).Decode(&f); err != nil {
		return nil, fmt.Errorf("%w: read model: %v", ErrLSA, err)
	}
	if f.Dim < 1 || len(f.IDF) != len(f.Words) || len(f.Proj) != len(f.Words)*f.Dim {
		return nil, fmt.Errorf("%w: read model: inconsistent sizes", ErrLSA)
	}
	m := &LSA{name: f.Name, dim: f.Dim, vocab: make(map[string]int, len(f.Words)), idf: f.IDF, proj: f.Proj, trainedOn: f.TrainedOn}
	for j, w := range f.Words {
		m.vocab[w] = j
	}
	return m, nil
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
