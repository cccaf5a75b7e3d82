package predict

import (
	"reflect"
	"slices"
	"testing"

	"github.com/fastsim/fastsim/internal/validation"
	"github.com/fastsim/fastsim/internal/workload"
)

// TestMechanismsCoverJob: each boolean switch of workload.Job, set alone
// on a job with nothing else set, turns exactly one row of Mechanisms on,
// a different row for each, and so does --grad-reduce after-backward.
// SequenceParallel is the layout's, named by the report apart.
func TestMechanismsCoverJob(t *testing.T) {
	if got := MechanismsOf(&workload.Job{}); got == nil || len(got) != 0 {
		t.Fatalf("a job with no switch: %#v, want an empty list", got)
	}
	seen := map[string]string{}
	typ := reflect.TypeOf(workload.Job{})
	for i := range typ.NumField() {
		f := typ.Field(i)
		if f.Type.Kind() != reflect.Bool || f.Name == "SequenceParallel" {
			continue
		}
		var j workload.Job
		reflect.ValueOf(&j).Elem().Field(i).SetBool(true)
		got := MechanismsOf(&j)
		if len(got) != 1 {
			t.Errorf("Job.%s alone: mechanisms %q, want one row (add it to Mechanisms)", f.Name, got)
			continue
		}
		if other, dup := seen[got[0]]; dup {
			t.Errorf("Job.%s and Job.%s both turn on %s", f.Name, other, got[0])
		}
		seen[got[0]] = f.Name
	}
	j := workload.Job{GradReduce: workload.GradAfterBackward}
	if got := MechanismsOf(&j); !slices.Equal(got, []string{"--grad-reduce after-backward"}) {
		t.Errorf("after-backward: %q", got)
	}
	if len(seen)+1 != len(Mechanisms) {
		t.Errorf("%d rows for %d switches", len(Mechanisms), len(seen)+1)
	}
}

// TestMechanismsOfValidation: the 175B runs of Korthikanti et al. (bf16,
// Megatron-LM of 2022 with its own data parallelism) take the four
// mechanisms JobOf sets for them, in the table's order; the SC'21 7.5B
// run (fp16, Megatron-LM of 2021 with PyTorch DDP, as its Table 1 script
// has it) takes the 16-bit gradient reduction overlapped with the
// backward and the 2021 layer norm, not the fused accumulation (JobOf's
// comments give the sources).
func TestMechanismsOfValidation(t *testing.T) {
	points, err := validation.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		id   string
		want []string
	}{
		{"korthikanti-175b-seqsel", []string{"--grad-reduce after-backward", "--fuse-grad-accumulation", "--blocking-p2p", "--fp32-cross-entropy"}},
		{"korthikanti-175b-full", []string{"--grad-reduce after-backward", "--fuse-grad-accumulation", "--blocking-p2p", "--fp32-cross-entropy"}},
		{"narayanan-7p5b", []string{"--half-grad-reduce", "--blocking-p2p", "--fp32-cross-entropy", "--apex-layer-norm", "--fp16-grads"}},
	} {
		i := slices.IndexFunc(points, func(p validation.Point) bool { return p.ID == c.id })
		if i < 0 {
			t.Fatalf("no point %s", c.id)
		}
		p := &points[i]
		j, err := JobOf(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := MechanismsOf(&j); !slices.Equal(got, c.want) {
			t.Errorf("%s: %q, want %q", c.id, got, c.want)
		}
	}
}
