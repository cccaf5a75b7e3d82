package history_test

import (
	"fmt"
	"io"

	"github.com/fastsim/fastsim/gen"
	"github.com/fastsim/fastsim/internal/history"
)

func ExampleReader() {
	r, err := history.Open("testdata/fuzz-seed/borrow.hist")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer r.Close()
	fmt.Printf("%+v\n", r.Header())
	var rec history.Record
	for {
		err := r.Next(&rec)
		if err == io.EOF {
			break
		}
		if err != nil {
			fmt.Println(err)
			return
		}
		if rec.Msg.Kind == gen.MsgCallFunction {
			cf := &rec.Msg.CallFunction
			fmt.Println(rec.Line, cf.Function, len(cf.Args.Leaves), "inputs on ranks", rec.Ranks[0].AppendRanks(nil))
		}
	}
	// Output:
	// {Version:1 WorldSize:2 GPUsPerHost:2}
	// 5 torch.ops.aten.randn.default 0 inputs on ranks [0 1]
	// 6 torch.ops.aten.mm.default 2 inputs on ranks [0 1]
	// 7 torch.ops.aten.uniform_.default 1 inputs on ranks [0 1]
	// 11 torch.ops.aten.add_.Tensor 2 inputs on ranks [0 1]
}
