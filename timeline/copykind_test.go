package timeline

import (
	"encoding/json"
	"testing"
)

// TestCopyKindText: every direction writes its name and reads back; an
// unknown name is an error.
func TestCopyKindText(t *testing.T) {
	for c := CopyUnknown; c < numCopyKinds; c++ {
		b, err := json.Marshal(c)
		if err != nil || string(b) != `"`+c.String()+`"` {
			t.Errorf("%d: %s, %v", c, b, err)
		}
		var back CopyKind
		if err := json.Unmarshal(b, &back); err != nil || back != c {
			t.Errorf("%s: read back %v, %v", b, back, err)
		}
	}
	var c CopyKind
	if err := json.Unmarshal([]byte(`"sideways"`), &c); err == nil {
		t.Errorf("sideways read as %v", c)
	}
}
