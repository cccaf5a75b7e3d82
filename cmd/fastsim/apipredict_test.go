package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"testing"

	"github.com/fastsim/fastsim"
)

// TestPredictJSONEqualsAPI: `fastsim predict --json` and fastsim.Predict
// answer alike. The predict command runs in process with its flags, its
// JSON file is read back, and every key it has is compared with the Prediction
// Predict returns for the Transformer of the same fields (the layout keys
// with the Transformer itself); only wall_s, the time the prediction took,
// is left out. A key the JSON gains later fails the test until it is
// compared here. Two layouts: the README's validated 175B run with its
// four mechanism flags ("Choose a layout"), and a ZeRO 2, sequence
// parallel, interleaved llama2-7b on 16 GPUs (dp = 16 / (2 x 4) = 2).
func TestPredictJSONEqualsAPI(t *testing.T) {
	hw, err := fastsim.LoadHardware("a100-80gb")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		model string
		args  []string
		tr    fastsim.Transformer
		mech  []string // the mechanism flags the JSON must name
	}{
		{
			model: "korthikanti-175b",
			args: []string{"--world", "64", "--tp", "8", "--pp", "8", "--global-batch", "64", "--micro-batch", "1",
				"--schedule", "interleaved:3", "--recompute", "selective", "--sequence-parallel",
				"--grad-reduce", "after-backward", "--fuse-grad-accumulation", "--blocking-p2p", "--fp32-cross-entropy"},
			tr: fastsim.Transformer{TP: 8, PP: 8, DP: 1, MicroBatch: 1, GlobalBatch: 64,
				Schedule: "interleaved:3", Recompute: "selective", SequenceParallel: true,
				GradReduce: "after-backward", FuseGradAccumulation: true, BlockingP2P: true, FP32CrossEntropy: true},
			mech: []string{"--grad-reduce after-backward", "--fuse-grad-accumulation", "--blocking-p2p", "--fp32-cross-entropy"},
		},
		{
			model: "llama2-7b",
			args: []string{"--world", "16", "--tp", "2", "--pp", "4", "--global-batch", "16", "--micro-batch", "1",
				"--schedule", "interleaved:2", "--recompute", "selective", "--sequence-parallel", "--zero", "2"},
			tr: fastsim.Transformer{TP: 2, PP: 4, DP: 2, MicroBatch: 1, GlobalBatch: 16,
				Schedule: "interleaved:2", Recompute: "selective", SequenceParallel: true, Zero: 2},
			mech: []string{},
		},
	} {
		path := filepath.Join(t.TempDir(), "p.json")
		args := append([]string{"--model", tc.model, "--hardware", "a100-80gb", "--quiet", "--json", path}, tc.args...)
		var stdout, stderr bytes.Buffer
		if code := predictCmd(args, &stdout, &stderr); code != exitOK {
			t.Fatalf("%s: predict exit %d: %s", tc.model, code, stderr.String())
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var doc predictJSON
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&doc); err != nil {
			t.Fatalf("%s: --json: %v\n%s", tc.model, err, data)
		}
		var keys map[string]json.RawMessage
		if err := json.Unmarshal(data, &keys); err != nil {
			t.Fatal(err)
		}

		m, err := fastsim.LoadModel(tc.model)
		if err != nil {
			t.Fatal(err)
		}
		tr := tc.tr
		tr.Model = m
		p, err := fastsim.Predict(context.Background(), tr, hw)
		if err != nil {
			t.Fatalf("%s: Predict: %v", tc.model, err)
		}
		for _, f := range []struct {
			key      string
			cli, api any
		}{
			// The layout, as the flags gave it and the Transformer has it.
			{"model", doc.Model, tc.model},
			{"hardware", doc.Hardware, hw.Name},
			{"tp", doc.TP, tr.TP},
			{"pp", doc.PP, tr.PP},
			{"dp", doc.DP, tr.DP},
			{"global_batch", doc.GlobalBatch, tr.GlobalBatch},
			{"micro_batch", doc.MicroBatch, tr.MicroBatch},
			{"schedule", doc.Schedule, tr.Schedule},
			{"recompute", doc.Recompute, tr.Recompute},
			{"sequence_parallel", doc.SeqParallel, tr.SequenceParallel},
			{"zero", doc.Zero, tr.Zero},
			// The prediction's figures, exact: JSON writes a float64 in
			// the shortest form that reads back as the same float64.
			{"world", doc.World, p.World},
			{"step_time_s", doc.StepTimeS, p.StepTimeS},
			{"tokens_per_s", doc.TokensPerS, p.TokensPerS},
			{"tflops_per_gpu", doc.TFLOPsPerGPU, p.TFLOPsPerGPU},
			{"mfu", doc.MFU, p.MFU},
			{"narayanan_tflops_per_gpu", doc.NarayananTFLOP, p.NarayananTFLOPsPerGPU},
			{"model_flops_per_iteration", doc.ModelFLOPs, p.ModelFLOPs},
			{"peak_memory_gib", doc.PeakMemoryGiB, p.PeakGiB},
			{"peak_device", doc.PeakDevice, p.PeakDevice},
			{"model_state_gib", doc.ModelStateGiB, p.ModelStateGiB},
			{"layer_state_gib", doc.LayerStateGiB, p.LayerStateGiB},
			{"activation_gib", doc.ActivationGiB, p.ActivationGiB},
			{"stored_activation_gib", doc.StoredActGiB, p.StoredActivationGiB},
			{"hbm_gib", doc.HBMGiB, p.HBMGiB},
			{"fits", doc.Fits, p.Fits},
			{"groups_simulated", doc.Groups, p.Groups},
			{"commands", doc.Commands, p.Commands},
			{"layer_passes_as_steps", doc.PassSteps, p.PassSteps},
			{"unknown_op_calls", doc.UnknownOpCalls, p.UnknownOps},
		} {
			if _, ok := keys[f.key]; !ok {
				t.Errorf("%s: --json has no %q", tc.model, f.key)
			}
			delete(keys, f.key)
			if !reflect.DeepEqual(f.cli, f.api) {
				t.Errorf("%s: %s: --json %v, Predict %v", tc.model, f.key, f.cli, f.api)
			}
		}
		// Mechanisms: [] for none in both, never null in the JSON.
		if !slices.Equal(doc.Mechanisms, p.Mechanisms) || !slices.Equal(doc.Mechanisms, tc.mech) || doc.Mechanisms == nil {
			t.Errorf("%s: mechanisms: --json %q (raw %s), Predict %q, want %q", tc.model, doc.Mechanisms, keys["mechanisms"], p.Mechanisms, tc.mech)
		}
		delete(keys, "mechanisms")
		delete(keys, "wall_s") // the time the prediction took
		if len(keys) > 0 {
			var left []string
			for k := range keys {
				left = append(left, k)
			}
			sort.Strings(left)
			t.Errorf("%s: --json keys not compared with Predict: %v", tc.model, left)
		}
		// The Prediction as JSON has --json's keys and values for every
		// figure both hold (the layout's fields are --json's alone; the
		// wall time is wall_ns there).
		api, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		var apiKeys, cliKeys map[string]json.RawMessage
		if err := json.Unmarshal(api, &apiKeys); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, &cliKeys); err != nil {
			t.Fatal(err)
		}
		delete(apiKeys, "wall_ns")
		for k, v := range apiKeys {
			var cc bytes.Buffer
			c, ok := cliKeys[k]
			if ok {
				ok = json.Compact(&cc, c) == nil && bytes.Equal(cc.Bytes(), v)
			}
			if !ok {
				t.Errorf("%s: json.Marshal(Prediction) %q: %s, --json: %s", tc.model, k, v, c)
			}
		}
		if len(apiKeys) < 20 {
			t.Errorf("%s: json.Marshal(Prediction) has %d keys: %s", tc.model, len(apiKeys), api)
		}
	}
}
