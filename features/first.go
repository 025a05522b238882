package features

import "os"

// LoadFirst returns the fitted spec of the first of dirs that holds one
// (Load), and that directory; nil, "" and no error when none does. Empty
// names and paths that are not directories are passed over.
func LoadFirst(dirs ...string) (*Fitted, string, error) {
	for _, dir := range dirs {
		if st, err := os.Stat(dir); dir == "" || err != nil || !st.IsDir() {
			continue
		}
		saved, err := Load(dir)
		if err != nil {
			return nil, "", err
		}
		if saved != nil {
			return saved, dir, nil
		}
	}
	return nil, "", nil
}
