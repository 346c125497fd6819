package replay

import (
	"encoding/json"
	"testing"

	"github.com/traceaudit/traceaudit/timeline"
)

// TestCopyJSON pins a plan copy's JSON: the direction is a name, as the
// replay contract has it.
func TestCopyJSON(t *testing.T) {
	c := Copy{Dir: timeline.CopyDtoH, Bytes: 4096, Pageable: true}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	const prefix = `{"dir":"DtoH","bytes":4096,"pageable":true,`
	if len(b) < len(prefix) || string(b[:len(prefix)]) != prefix {
		t.Errorf("got %s, want it to start %s", b, prefix)
	}
	var back Copy
	if err := json.Unmarshal(b, &back); err != nil || back != c {
		t.Errorf("read back %+v, %v; want %+v", back, err, c)
	}
}
