package analyze

import (
	"encoding/json"
	"fmt"
)

// findingJSON is Finding without its methods, for encoding.
type findingJSON Finding

// MarshalJSON writes the finding as the analyze contract has it, with
// Bound as detail.bound and EstimateSource as detail.estimate_source
// (strings among the detail's numbers).
func (f Finding) MarshalJSON() ([]byte, error) {
	if f.Bound == "" && f.EstimateSource == "" {
		return json.Marshal(findingJSON(f))
	}
	detail := make(map[string]any, len(f.Detail)+2)
	for k, v := range f.Detail {
		detail[k] = v
	}
	if f.Bound != "" {
		detail["bound"] = f.Bound
	}
	if f.EstimateSource != "" {
		detail["estimate_source"] = f.EstimateSource
	}
	return json.Marshal(struct {
		findingJSON
		Detail map[string]any `json:"detail"`
	}{findingJSON(f), detail})
}

// UnmarshalJSON reads a finding written by MarshalJSON: detail.bound goes
// to Bound, detail.estimate_source to EstimateSource, the detail's numbers
// to Detail.
func (f *Finding) UnmarshalJSON(b []byte) error {
	var raw struct {
		findingJSON
		Detail map[string]any `json:"detail"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*f = Finding(raw.findingJSON)
	f.Detail = nil
	for k, v := range raw.Detail {
		switch x := v.(type) {
		case float64:
			if f.Detail == nil {
				f.Detail = map[string]float64{}
			}
			f.Detail[k] = x
		case string:
			switch k {
			case "bound":
				f.Bound = x
			case "estimate_source":
				f.EstimateSource = x
			default:
				return fmt.Errorf("finding %s: detail.%s: want a number, got a string", f.ID, k)
			}
		default:
			return fmt.Errorf("finding %s: detail.%s: want a number", f.ID, k)
		}
	}
	return nil
}
