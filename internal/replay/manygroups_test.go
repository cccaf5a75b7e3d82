package replay

import (
	"fmt"
	"strings"
	"testing"
)

// bitHistory is a history of a world of 2^bits ranks: a stream, then for
// k = 0 to bits-1 a command on the ranks whose bit k is set (line k+3),
// which cuts every group in two: after it the world is 2^(k+1) groups.
// Then a command on the whole world, which cuts none.
func bitHistory(bits int) string {
	world := 1 << bits
	var b strings.Builder
	fmt.Fprintf(&b, `{"fastsim":"history","version":1,"world_size":%d}`+"\n", world)
	fmt.Fprintf(&b, `{"ts":0,"ranks":[{"offset":0,"sizes":[%d],"strides":[1]}],"msg":{"type":"CreateStream","result":{"ref":1,"name":"main"},"default":true}}`+"\n", world)
	call := `{"ts":%d,"ranks":[%s],"msg":{"type":"CallFunction","function":"f","args":[],"kwargs":{},"result":[{"tensor":%d,"storage":%d,"nbytes":%d,"dtype":"float32","shape":[%d],"device":"cuda"}],"mutates":[],"stream":{"ref":1}}}` + "\n"
	for k := range bits {
		ranks := fmt.Sprintf(`{"offset":%d,"sizes":[%d,%d],"strides":[%d,1]}`, 1<<k, world>>(k+1), 1<<k, 1<<(k+1))
		fmt.Fprintf(&b, call, k+1, ranks, k+1, k+1, 4*(k+1), k+1)
	}
	fmt.Fprintf(&b, call, bits+1, fmt.Sprintf(`{"offset":0,"sizes":[%d],"strides":[1]}`, world), bits+1, bits+1, 4, 1)
	return b.String()
}

// TestManyGroupsNote: with the floor lowered to 8 groups, a world of 64
// ranks is many groups from 8 on (8 x 16 >= 64): the history of its 6
// rank bits reaches 8 groups at the command on bit 2, line 5, and
// Options.ManyGroups is called there once, with 8 groups of 64 ranks;
// never when ungrouped, nor for a history of whole-world commands. The
// report is the same with and without it.
func TestManyGroupsNote(t *testing.T) {
	defer func(f int) { manyGroupsFloor = f }(manyGroupsFloor)
	manyGroupsFloor = 8
	type note struct {
		line   int64
		groups int
		world  int64
	}
	var notes []note
	record := func(line int64, groups int, world int64) { notes = append(notes, note{line, groups, world}) }
	h := bitHistory(6)
	with, err := Reader(strings.NewReader(h), "bits", Options{Grouped: true, ManyGroups: record})
	if err != nil {
		t.Fatal(err)
	}
	if len(notes) != 1 || notes[0] != (note{5, 8, 64}) {
		t.Errorf("notes %+v, want one at line 5 of 8 groups of a world of 64", notes)
	}
	if with.Groups != 64 {
		t.Errorf("%d groups at the end, want 64", with.Groups)
	}
	without, err := Reader(strings.NewReader(h), "bits", Options{Grouped: true})
	if err != nil {
		t.Fatal(err)
	}
	if with.Final != without.Final || with.Commands != without.Commands {
		t.Errorf("the report with the note %+v differs from the one without %+v", with.Final, without.Final)
	}
	notes = nil
	if _, err := Reader(strings.NewReader(h), "bits", Options{ManyGroups: record}); err != nil || len(notes) != 0 {
		t.Errorf("ungrouped: %v, notes %+v; want none", err, notes)
	}
	if _, err := Reader(strings.NewReader(bitHistory(0)), "bits", Options{Grouped: true, ManyGroups: record}); err != nil || len(notes) != 0 {
		t.Errorf("one rank: %v, notes %+v; want none", err, notes)
	}
}

// TestManyGroupsRule: at the floor of 65,536 groups, a world of 16 ranks
// a group or fewer is many groups; one rank more a group, or one group
// fewer than the floor, is not.
func TestManyGroupsRule(t *testing.T) {
	for _, tc := range []struct {
		groups int
		world  int64
		want   bool
	}{
		{1 << 16, 1 << 20, true},
		{1<<16 - 1, 1 << 16, false},
		{1 << 16, 1<<20 + 1, false},
		{1 << 18, 1 << 20, true},
		{1 << 18, 1 << 24, false},
		{1 << 20, 1 << 24, true},
	} {
		if got := GroupsGainLittle(tc.groups, tc.world); got != tc.want {
			t.Errorf("GroupsGainLittle(%d, %d) = %v, want %v", tc.groups, tc.world, got, tc.want)
		}
	}
}
