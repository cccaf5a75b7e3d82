package jsonl

import (
	"math/rand/v2"
	"strconv"
	"testing"
)

// TestDigitRun: the eight-at-a-time digit reader gives what reading one
// digit at a time gives (the definition: at most 18 digits, "0" alone),
// for numbers of every length followed by every kind of byte, at every
// distance from the end of the buffer.
func TestDigitRun(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	one := func(b []byte, i int) (uint64, int) {
		if b[i] == '0' {
			return 0, i + 1
		}
		var u uint64
		j := i
		for j < len(b) && j-i < 18 && b[j] >= '0' && b[j] <= '9' {
			u = u*10 + uint64(b[j]-'0')
			j++
		}
		return u, j
	}
	tails := []string{"", ",", "}", "]", "/", ":", ".5", "e3", " ", "\xff", "\x00", "123456789012345678901"}
	for n := 1; n <= 22; n++ {
		for k := 0; k < 200; k++ {
			digits := []byte(strconv.FormatUint(rng.Uint64(), 10) + strconv.FormatUint(rng.Uint64(), 10))[:n]
			if k%3 == 0 && n > 1 {
				digits[rng.IntN(n)] = '0'
			}
			for _, tail := range tails {
				b := append([]byte("x"), digits...)
				b = append(b, tail...)
				for cut := len(b); cut > 1; cut-- {
					wu, wj := one(b[:cut], 1)
					gu, gj := digitRun(b[:cut], 1)
					if gu != wu || gj != wj {
						t.Fatalf("digitRun(%q) = %d, %d; want %d, %d", b[1:cut], gu, gj-1, wu, wj-1)
					}
				}
			}
		}
	}
}
