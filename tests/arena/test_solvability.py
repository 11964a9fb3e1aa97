from arena.solvability import check_solvable, task_problems
from arena.types import GoldItem, PriceConstraint, Product, Task, Voucher


def product(pid: str, shop: str = "s1", price: float = 100.0) -> Product:
    return Product(
        product_id=pid,
        shop_id=shop,
        title=f"Title {pid}",
        price=price,
        sold_count=1,
        sku_options={"1": {"size": "m", "color": "red"}, "2": {"size": "l", "color": "blue"}},
        attributes={"material": ("cotton",)},
        service=("COD",),
    )


def item(pid: str, **fields: object) -> GoldItem:
    return GoldItem(product_id=pid, titles=(f"Title {pid}",), **fields)


def test_a_gold_meeting_its_constraints_is_solvable() -> None:
    gold = item(
        "a",
        price=(PriceConstraint(mode="between", low=50, high=150),),
        service=("COD",),
        sku_options=({"size": "l", "color": "blue"},),
        attributes=({"material": ("cotton",)},),
    )
    assert check_solvable(Task(intent="product", query="q", gold=(gold,)), {"a": product("a")})


def test_each_broken_constraint_is_named() -> None:
    products = {"a": product("a")}
    cases = {
        "0:price:0": item("a", price=(PriceConstraint(mode="less than", high=99),)),
        "0:service:official": item("a", service=("official",)),
        "0:pair:size=l": item("a", sku_options=({"size": "l", "color": "red"},)),  # no one variant has both
        "0:title": GoldItem(product_id="a", titles=("Another title",)),
    }
    for key, gold in cases.items():
        assert key in task_problems(Task(intent="product", query="q", gold=(gold,)), products)
    assert task_problems(Task(intent="product", query="q", gold=(item("zz"),)), products) == [
        "zz: not in the catalog"
    ]


def test_shop_and_voucher_baskets() -> None:
    products = {"a": product("a", "s1", 100), "b": product("b", "s2", 100), "c": product("c", "s1", 50)}
    assert "shop" in task_problems(Task(intent="shop", query="q", gold=(item("a"), item("b"))), products)
    voucher = Voucher(voucher_type="shop", threshold=120, discount_type="fixed", face_value=30)
    fits = Task(intent="voucher", query="q", gold=(item("a"), item("c")), voucher=voucher, budget=120)
    assert task_problems(fits, products) == []
    over = fits.model_copy(update={"budget": 119.0})
    assert "budget" in task_problems(over, products)
    two_shops = Task(intent="voucher", query="q", gold=(item("a"), item("b")), voucher=voucher, budget=500)
    assert task_problems(two_shops, products) == ["voucher"]  # fits the budget, but never unlocks the voucher
