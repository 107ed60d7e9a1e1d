import pytest

from stockroom.cli import EXIT_ERROR, EXIT_OK, main


def run(data_dir, *args):
    return main(["--data-dir", str(data_dir), *args])


def test_add_list_and_value(data_dir, capsys):
    assert run(data_dir, "add", "TOOL-0001", "Claw hammer", "--quantity", "12", "--price", "14.90") == EXIT_OK
    assert run(data_dir, "list") == EXIT_OK
    assert run(data_dir, "value") == EXIT_OK
    out = capsys.readouterr().out
    assert "Added TOOL-0001 (Claw hammer), 12 in stock." in out
    assert "Claw hammer" in out.splitlines()[2]
    assert "1 item(s) worth €178.80." in out
    assert (data_dir / "inventory.json").exists()


def test_withdraw_and_restock(data_dir, capsys):
    run(data_dir, "add", "TOOL-0001", "Claw hammer", "--quantity", "4")
    assert run(data_dir, "withdraw", "TOOL-0001", "3") == EXIT_OK
    assert run(data_dir, "restock", "tool-0001", "10") == EXIT_OK
    out = capsys.readouterr().out
    assert "TOOL-0001: 1 left." in out
    assert "TOOL-0001: 11 in stock." in out


def test_withdraw_too_much_is_an_error(data_dir, capsys):
    run(data_dir, "add", "TOOL-0001", "Claw hammer", "--quantity", "1")
    assert run(data_dir, "withdraw", "TOOL-0001", "2") == EXIT_ERROR
    err = capsys.readouterr().err
    assert "only 1 in stock" in err
    assert "withdraw at most 1" in err


def test_unknown_sku_is_an_error(data_dir, capsys):
    assert run(data_dir, "restock", "TOOL-0404", "1") == EXIT_ERROR
    assert "no item with SKU 'TOOL-0404'" in capsys.readouterr().err


def test_low_uses_settings_threshold(data_dir, capsys):
    data_dir.mkdir(parents=True)
    (data_dir / "stockroom.ini").write_text("[stockroom]\nlow_stock_threshold = 1\n")
    run(data_dir, "add", "TOOL-0001", "Claw hammer", "--quantity", "2")
    run(data_dir, "add", "FAST-0100", "Wood screws", "--quantity", "1")
    assert run(data_dir, "low") == EXIT_OK
    out = capsys.readouterr().out
    assert "1 item(s) at or below 1 units:" in out
    assert "TOOL-0001" not in out.split("at or below")[-1]


def test_export(data_dir, tmp_path, capsys):
    run(data_dir, "add", "TOOL-0001", "Claw hammer", "--quantity", "2", "--price", "3")
    target = tmp_path / "items.csv"
    assert run(data_dir, "export", str(target)) == EXIT_OK
    assert target.read_text(encoding="utf-8").splitlines()[1] == "TOOL-0001,Claw hammer,2,3.00,MAIN"


def test_missing_command_is_a_usage_error(data_dir):
    with pytest.raises(SystemExit) as excinfo:
        run(data_dir)
    assert excinfo.value.code == 2
