package natsauth

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// Credentials maps a NATS user to its password in clear. It is what the
// users of the rendered configuration connect with (nats://user:password@
// host:port); the configuration holds only hashes. Passwords are 48 hex
// digits (192 random bits), so they need no escaping in a URL. They are
// never derived from the gateway's tokens: a NATS password and an HTTP
// token are separate secrets. Not safe for concurrent use.
type Credentials map[string]string

// passwordBytes is the randomness of a generated password.
const passwordBytes = 24

// NewPassword returns a fresh random password.
func NewPassword() (string, error) {
	b := make([]byte, passwordBytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("natsauth: random password: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// LoadCredentials reads a credentials file, a JSON object from user name
// to password. A file that does not exist is an empty table, so that the
// first run creates it.
func LoadCredentials(path string) (Credentials, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Credentials{}, nil
	}
	if err != nil {
		return nil, err
	}
	c := Credentials{}
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("not a JSON object from user to password: %w", err)
	}
	for u, p := range c {
		if p == "" {
			return nil, fmt.Errorf("user %q has an empty password", u)
		}
	}
	return c, nil
}

// Sync makes c hold exactly users: a user it lacks gets a new password, a
// user it has keeps its password (so re-rendering after adding a tenant
// changes no one else's), and a user no longer in users is dropped. It
// returns who was added and who was dropped, sorted.
func (c Credentials) Sync(users []string) (added, dropped []string, err error) {
	want := map[string]bool{}
	for _, u := range users {
		want[u] = true
		if _, ok := c[u]; ok {
			continue
		}
		if c[u], err = NewPassword(); err != nil {
			return nil, nil, err
		}
		added = append(added, u)
	}
	for u := range c {
		if !want[u] {
			delete(c, u)
			dropped = append(dropped, u)
		}
	}
	slices.Sort(added)
	slices.Sort(dropped)
	return added, dropped, nil
}

// Save writes c to path, readable by its owner only, replacing the file
// in one step so that a crash never leaves half a table.
func (c Credentials) Save(path string) error {
	data, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".credentials-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
