from perspect.cli.main import run

run()
