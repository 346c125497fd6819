package timeline

import "strings"

// ClassifyRange returns RangeStep for PyTorch profiler steps
// ("ProfilerStep#12"), RangeDataLoader for DataLoader and DataPipe iterator
// spans ("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
// "enumerate(DataPipe)#..."), and dflt for anything else. Ingesters pass
// the kind of range their input recorded (NVTX or annotation) as dflt.
func ClassifyRange(name string, dflt RangeKind) RangeKind {
	switch {
	case strings.HasPrefix(name, ProfilerStepPrefix):
		return RangeStep
	case strings.HasPrefix(name, "enumerate(DataLoader)#"), strings.HasPrefix(name, "enumerate(DataPipe)#"),
		strings.Contains(name, "DataLoaderIter.__next__"):
		return RangeDataLoader
	}
	return dflt
}

// ProfilerStepPrefix starts the name of a PyTorch profiler step range
// ("ProfilerStep#12").
const ProfilerStepPrefix = "ProfilerStep#"

// StepNumber returns "#12" for the range name "ProfilerStep#12", and
// whether name is a profiler step's.
func StepNumber(name string) (string, bool) {
	rest, ok := strings.CutPrefix(name, ProfilerStepPrefix)
	if !ok || rest == "" {
		return "", false
	}
	return "#" + rest, true
}
