module boxauth.test/hooks

go 1.26
